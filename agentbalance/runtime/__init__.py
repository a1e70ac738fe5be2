"""Executing a MAS: the async DAG runner and its accounting."""
