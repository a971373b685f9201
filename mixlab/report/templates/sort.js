// Click a column header of a table.sortable to sort its rows (again: reversed). A cell's
// data-sort attribute, when present, is compared as a number; otherwise its text is.
(function () {
  "use strict";
  function key(cell) {
    if (!cell) return { num: false, v: "" };
    var s = cell.getAttribute("data-sort");
    if (s !== null && s !== "") return { num: true, v: parseFloat(s) };
    return { num: false, v: cell.textContent.trim().toLowerCase() };
  }
  function compare(a, b) {
    if (a.num && b.num) return a.v - b.v;
    if (a.num) return -1;             // numbers before empty or text cells
    if (b.num) return 1;
    return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  }
  function sortBy(table, th, col) {
    var descending = th.getAttribute("aria-sort") === "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, k: key(row.cells[col]), i: i };
    });
    rows.sort(function (a, b) {
      var c = compare(a.k, b.k);
      if (descending) c = -c;
      return c !== 0 ? c : a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var button = th.querySelector("button");
      if (button) button.addEventListener("click", function () { sortBy(table, th, col); });
    });
  });
})();
