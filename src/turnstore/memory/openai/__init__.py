"""Sessions backed by the OpenAI API.

`OpenAIConversationsSession` (conversations.py) and the compaction wrapper
`OpenAIResponsesCompactionSession` (compaction.py, compaction_items.py).
"""
