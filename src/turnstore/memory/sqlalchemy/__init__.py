"""The SQLAlchemy backend (PostgreSQL, MySQL/MariaDB).

`SQLAlchemySession` and its tables (session.py) and the CLI's store (store.py). Needs the
`postgres` extra; `turnstore.memory` imports it only when `SQLAlchemySession` is first used.
"""
