"""Interoperability with other tools: mteb, BEIR and Hugging Face exports."""
