"""The safety net: the scan that compares Backlog's approved issues with the schedules
(`scan`) and the rescue that registers a page of leaks together (`rescue`)."""
