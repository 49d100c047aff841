"""Core progress and cancellation forwarded to a QgsProcessingFeedback."""

from ..core import EvaluationCanceled, Progress


class FeedbackProgress(Progress):
    """Forwards core progress (0-100) into a slice [start, end] of the algorithm's progress
    bar; the core's stage checks cancel when the user cancels."""

    def __init__(self, feedback, start, end):
        self.feedback, self.start, self.end = feedback, start, end

    def report(self, percent, message=""):
        if message:
            self.feedback.setProgressText(message)
        self.feedback.setProgress(self.start + (self.end - self.start) * percent / 100.0)

    def is_canceled(self):
        return self.feedback.isCanceled()


def fraction_progress(feedback, start: float, end: float):
    """A core progress callable(fraction done in [0, 1]) into [start, end] % of the
    algorithm's progress bar that raises EvaluationCanceled when the user cancels (for the
    core functions that take such a callable rather than a Progress)."""

    def advance(fraction):
        feedback.setProgress(start + (end - start) * fraction)
        if feedback.isCanceled():
            raise EvaluationCanceled("canceled")

    return advance
