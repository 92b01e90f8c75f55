"""Using a trained policy outside training: ``load`` a run directory or checkpoint as an ``Agent`` that acts on raw
observations (``agent.py``), and ``export`` it as TorchScript or ONNX (``export.py``). Imports nothing of the
training pipelines (``entry``)."""
