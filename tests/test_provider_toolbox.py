"""Every algorithm of the provider: icon, short help, and help for every parameter."""

from pathlib import Path

import pytest

ALGORITHMS = (
    "evaluatepolygons", "pixelsperfield", "spatialiou", "overlappairs", "checkthresholds",
    "comparepredictions",
)


def test_every_algorithm_of_the_provider_has_its_own_icon(ioueval_provider):
    for algorithm in ioueval_provider.algorithms():
        assert Path(algorithm.svgIconPath()).name == f"{algorithm.name()}.svg"


@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_algorithm_has_an_icon_and_help_for_every_parameter(ioueval_provider, name):
    algorithm = ioueval_provider.algorithm(name)
    assert algorithm is not None, name
    icon = Path(algorithm.svgIconPath())
    assert icon.is_file() and icon.name == f"{name}.svg"
    assert not algorithm.icon().isNull()
    assert algorithm.shortDescription() and "<p>" in algorithm.shortHelpString()
    for parameter in algorithm.parameterDefinitions():
        assert parameter.description(), (name, parameter.name())
        assert len(parameter.help()) > 20, (name, parameter.name())
    for output in algorithm.outputDefinitions():
        assert output.description(), (name, output.name())
