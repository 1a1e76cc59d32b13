"""Prepare: what can be done before a send's due second is done ahead of it (`ahead`: the
issue read in bulk, the channel's preparation), so at the second only the publish is left."""
