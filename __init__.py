"""IoU Evaluation: a QGIS Processing plugin that scores predicted polygons against a reference."""


def classFactory(iface):  # noqa: N802 (QGIS API)
    from .plugin.dependencies import dependency_problems
    from .plugin.messages import UnavailablePlugin, show_problems

    problems = dependency_problems()
    if any(problem.dependency.required for problem in problems):
        return UnavailablePlugin(iface, problems)  # says which package, and how to install it
    show_problems(problems, iface)  # optional ones: the plugin works without what they serve
    from .plugin.plugin import IoUEvaluationPlugin

    return IoUEvaluationPlugin(iface)
