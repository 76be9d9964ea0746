"""Plans, caps and the STARTER gate (the one place that knows them), and Stripe events."""
