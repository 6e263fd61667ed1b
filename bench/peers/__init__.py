"""Benchmark peers: servers and loops a user would write around another OCR
library. ``flask_paddleocr`` runs as ``python -m bench.peers.flask_paddleocr``;
the RapidOCR ones run by path inside their own virtual environment, which has
no batchline (bench/lib/rapidocr_venv.py)."""
