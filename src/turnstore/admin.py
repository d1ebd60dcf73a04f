"""Managing stored sessions: list, read, export and delete them, whatever the backend.

What the `turnstore` command does, from Python: `open_session_store` opens the storage a file
path or URL names (SQLite, PostgreSQL through SQLAlchemy, Redis) as a `SessionStore`.

```python
from turnstore.admin import open_session_store

async with open_session_store("conversations.db") as store:
    for info in await store.list_sessions(limit=10):
        print(info.session_id, info.item_count, info.last_activity)
```
"""

from __future__ import annotations

from .memory.open_store import open_session_store
from .memory.store import SessionInfo, SessionRecord, SessionStats, SessionStore

__all__ = ["SessionInfo", "SessionRecord", "SessionStats", "SessionStore", "open_session_store"]
