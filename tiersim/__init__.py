"""tiersim: replay logged LLM traffic through a modelled, precision-tiered GPU fleet."""

__version__ = "0.1.0"
