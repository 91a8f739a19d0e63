"""Agent evaluation: running agents on fresh tasks, grading their submissions in a clean tree,
reference agents, scores, the leaderboard with its plots and resemblance checks.
"""
