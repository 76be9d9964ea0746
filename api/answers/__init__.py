"""Answers (issue 28): the questions that best answer what a reader typed, found by meaning and
by words (``service``), with snippets, typo tolerance and the org's synonyms."""
