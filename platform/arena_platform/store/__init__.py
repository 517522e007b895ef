"""Keyword-only functions over the SQL tables, one module per entity family.

Every function takes an open `Session` first and never commits unless its name says it records
something whole (the caller owns the transaction otherwise). Routes and tasks stay thin by calling
these; nothing here imports the API or the workers.
"""
