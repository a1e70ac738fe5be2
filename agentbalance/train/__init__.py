"""Training the controller end to end: data splits, difficulty labels, REINFORCE with budget targeting."""
