"""Errors the core raises for bad scenarios: one clear message naming the field."""


class ScenarioError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
