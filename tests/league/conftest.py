from tests.plugins.conftest import example_site  # noqa: F401  (the installed example plugin)
