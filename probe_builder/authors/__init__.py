"""Who proposes adversarial patches, probes and statement wording: the Author protocol with its
mechanical default, and an OpenAI-compatible endpoint.
"""
