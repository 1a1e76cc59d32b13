"""`/automedia …` comment commands on Backlog issues: parse (grammar) and run (seed 001)."""
