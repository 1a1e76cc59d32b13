"""Publish: the due sends claimed within each tenant's limit (`scheduler`), a batch's reads
made once (`batch_reads`), the run of one claimed row through its channel's publisher
(`delivery`) and what a send leaves in the database (`sent`)."""
