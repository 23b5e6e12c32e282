"""The suite's fixtures live in tests/fixtures/ (see its __init__), one module per concern."""

pytest_plugins = [
    "tests.fixtures.app",
    "tests.fixtures.newsroom",
    "tests.fixtures.servers",
    "tests.fixtures.browser",
]
