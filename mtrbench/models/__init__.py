"""Models: loading checkpoints, and the shapes of model objects a user can bring (``protocols``) with the
adapters that make them retrievers."""
