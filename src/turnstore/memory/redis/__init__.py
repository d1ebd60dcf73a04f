"""The Redis backend.

`RedisSession`, its key layout and Lua scripts (session.py) and the CLI's store (store.py). Needs
the `redis` extra; `turnstore.memory` imports it only when `RedisSession` is first used.
"""
