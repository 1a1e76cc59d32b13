"""Write back: the Backlog update of an ended delivery (`issue_update`), its comment
(`outcome_comments`) and the queue that runs the write-backs at Backlog's pace (`queue`)."""
