"""The front doors: the command line, the chat session, the MCP server, the batch and its
report, and `doctor`. Each takes what a person or a client typed, calls the jobs in
`jobs.py` (the same jobs behind every door), and shows the outcome; the loop itself lives in
agent/'s top level."""
