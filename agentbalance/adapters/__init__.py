"""Adapters: run what the controller builds inside other agent frameworks (AutoGen AgentChat).

Each adapter is an optional extra; importing this package never imports a framework.
"""
