"""Progress reporting and cancellation between the stages of a long evaluation."""

from __future__ import annotations


class EvaluationCanceled(Exception):
    """Raised at a stage boundary when the caller asked to cancel."""


class Progress:
    """Receives progress in percent; subclass to forward it (the provider forwards it to
    QgsProcessingFeedback). The default is silent and never cancels."""

    def report(self, percent: float, message: str = "") -> None:
        """Called with 0 <= percent <= 100 and, at each new stage, its description."""

    def is_canceled(self) -> bool:
        return False

    def checkpoint(self, percent: float, message: str = "") -> None:
        """Report progress, then raise EvaluationCanceled if cancellation was asked for."""
        self.report(percent, message)
        if self.is_canceled():
            raise EvaluationCanceled(message or "canceled")

    def span(self, start: float, end: float):
        """A callable(fraction) for work inside a stage: reports start + fraction·(end -
        start) percent (no new stage message) and raises EvaluationCanceled on cancel."""

        def advance(fraction: float) -> None:
            self.checkpoint(start + (end - start) * min(max(fraction, 0.0), 1.0))

        return advance
