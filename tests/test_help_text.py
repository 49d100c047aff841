"""The algorithms' help as plain text for qgis_process in a terminal, and which command line
runs one of the provider's algorithms (processing_provider.help_text, .qgis_process)."""

import pytest
from iou_evaluation.processing_provider.help_text import html_to_text
from iou_evaluation.processing_provider.qgis_process import algorithm_run


def test_paragraphs_lists_tags_and_entities_become_plain_text():
    markup = """
<p>Checks <b>conditions</b> such as <code>f1 &gt;= 0.8</code> on
a report.</p>
<ul>
<li>Keys with dots are quoted: <code>per_size_class."0.5-1".recall</code>.</li>
<li>Operators &lt; &gt; &amp;c.</li>
</ul>
<p>One line<br>and the next.</p>
"""
    assert html_to_text(markup) == (
        "Checks conditions such as f1 >= 0.8 on a report.\n"
        "\n"
        '- Keys with dots are quoted: per_size_class."0.5-1".recall.\n'
        "- Operators < > &c.\n"
        "\n"
        "One line\n"
        "and the next."
    )


def test_long_paragraphs_and_items_are_wrapped_with_a_hanging_indent():
    words = " ".join(["word"] * 40)  # 199 characters
    text = html_to_text(f"<p>{words}</p><ul><li>{words}</li></ul>", width=50)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 50
    paragraph, items = text.split("\n\n")
    assert paragraph.replace("\n", " ") == words
    first, *rest = items.splitlines()
    assert first.startswith("- word") and all(line.startswith("  word") for line in rest)
    assert " ".join(line[2:] for line in items.splitlines()) == words


def test_every_algorithms_help_reads_without_tags(ioueval_provider):
    for algorithm in ioueval_provider.algorithms():
        text = html_to_text(algorithm.shortHelpString())
        for tag in ("<p>", "</p>", "<b>", "<code>", "<li>", "<i>", "&gt;", "&lt;", "&amp;"):
            assert tag not in text, (algorithm.name(), tag)


@pytest.mark.parametrize("arguments, algorithm", [
    (["qgis_process.bin", "run", "ioueval:rasteriou", "--", "PREDICTED=p.tif"],
     "ioueval:rasteriou"),
    (["qgis_process.bin", "run", "--json", "ioueval:spatialiou", "--"], "ioueval:spatialiou"),
    (["qgis_process", "run", "native:buffer", "--", "INPUT=a.shp"], "native:buffer"),
    (["qgis_process.bin", "help", "ioueval:rasteriou"], None),
    (["qgis_process.bin", "list"], None),
    (["qgis_process.bin"], None),
])
def test_the_algorithm_a_command_line_runs(arguments, algorithm):
    assert algorithm_run(arguments) == algorithm
