"""One module per function: a frozen params dataclass and ``run(datasets, params) -> dict``."""
