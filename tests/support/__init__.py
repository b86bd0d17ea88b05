"""Helpers shared by the tests: paths, the served app, AppTest, PostgreSQL, a WebSocket client."""
