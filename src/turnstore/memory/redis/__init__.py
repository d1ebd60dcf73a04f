"""The Redis backend, on a single Redis server or a Redis Cluster.

`RedisSession` (session.py), its key layouts and element format (keys.py), its Lua scripts
(scripts.py), the URL schemes (urls.py, no third-party import) and the CLI's store (store.py).
Needs the `redis` extra; `turnstore.memory` imports it only when `RedisSession` is first used.
"""
