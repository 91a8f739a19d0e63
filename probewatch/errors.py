"""The root of every error probewatch raises on purpose, and one base per stage.

Each package raises specific errors defined next to the code that raises them, each
deriving from its stage's base here; the edges (the CLI, the API, the job worker) catch
``ProbewatchError`` once and turn it into one line, a 4xx or a failed attempt. Every
message names the problem and, where there is one, the fix. Two kinds stay outside on
purpose: what the probe kit raises inside a test process (assertion failures, skips) and
the timeout of the pytest plugin injected into runs, which are test outcomes, not errors
of the service.
"""

from __future__ import annotations


class ProbewatchError(Exception):
    """Base of every error probewatch raises on purpose."""


class ConfigError(ProbewatchError):
    """Settings, a watch file, a repository's own configuration or a glob that cannot be used."""


class MinerError(ProbewatchError):
    """Mining merged PRs failed: the source, the cursor or the range."""


class BuildError(ProbewatchError):
    """A task cannot be built or validated from its PR."""


class RunnerError(ProbewatchError):
    """A run cannot be set up, placed or read: work trees, patches, environments, backends."""


class RegistryError(ProbewatchError):
    """The registry refused or could not do what was asked."""


class EvaluationError(ProbewatchError):
    """Agents cannot be evaluated, graded or scored as asked."""


class ServiceError(ProbewatchError):
    """The service cannot do what a webhook, a job or GitHub asked of it."""
