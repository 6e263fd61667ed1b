"""`batchline predict`'s plain-text lines for each kind of result."""

from client.cli import format_result


def test_ocr_lines_show_text_and_score():
    assert format_result([{"text": "Total $5.00", "score": 0.98765, "box": []}]) == ["Total $5.00\t0.9877"]


def test_labelled_ocr_lines_add_a_label_column_and_its_score():
    result = [
        {"text": "Expires 2027-03-01", "score": 0.99, "box": [], "label": "date", "label_score": 0.912345},
        {"text": "??", "score": 0.5, "box": [], "label": "other", "label_score": None},
    ]
    assert format_result(result) == ["Expires 2027-03-01\t0.9900\tdate\t0.9123", "??\t0.5000\tother\tNone"]


def test_a_classification_shows_its_label():
    assert format_result({"label": "money", "score": 0.5, "probs": [0.5, 0.5]}) == ["money\t0.5000"]
