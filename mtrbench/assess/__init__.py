"""DREAM: multi-agent debate relevance assessment that fills a benchmark's judgment holes."""
