"""Every algorithm of the provider: icon, short help, and help for every parameter."""

from pathlib import Path



def test_every_algorithm_of_the_provider_has_its_own_icon(ioueval_provider):
    for algorithm in ioueval_provider.algorithms():
        assert Path(algorithm.svgIconPath()).name == f"{algorithm.name()}.svg"


def test_every_algorithm_has_an_icon_and_help_for_every_parameter(ioueval_provider):
    # Every algorithm the provider offers (not a list kept here), so a new one cannot miss it.
    algorithms = ioueval_provider.algorithms()
    assert len(algorithms) >= 10
    for algorithm in algorithms:
        name = algorithm.name()
        icon = Path(algorithm.svgIconPath())
        assert icon.is_file() and icon.name == f"{name}.svg"
        assert not algorithm.icon().isNull(), name
        assert algorithm.shortDescription(), name
        assert "<p>" in algorithm.shortHelpString(), name
        for parameter in algorithm.parameterDefinitions():
            assert parameter.description(), (name, parameter.name())
            assert len(parameter.help()) > 20, (name, parameter.name())
        for output in algorithm.outputDefinitions():
            assert output.description(), (name, output.name())
