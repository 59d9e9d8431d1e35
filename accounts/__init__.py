"""Accounts, plans and API keys in SQL (SQLAlchemy). Flask-free, shared by web and CLI."""
