"""The learnable controller F_theta: one stage per module, composed only in controller.py.

The policy sees query text (embedded) and catalog/role facts; it never imports worlds, tasks or runtime.
"""
