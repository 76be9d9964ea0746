"""Issue 28's evaluation: the StackFAQ data (faq.json, questions.jsonl), its baselines and
the run over HTTP."""
