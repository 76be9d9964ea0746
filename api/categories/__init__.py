"""Categories: the first complete resource."""
