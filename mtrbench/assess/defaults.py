"""Names the ``assess`` command line needs before any assessment code is imported."""

QUERY_FORMS = ("auto", "rewrite", "current", "conversation")
