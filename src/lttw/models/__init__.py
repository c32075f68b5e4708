"""The classifiers: the registry and its save / load, the pretrained encoder, attention, the
LTTW model, the baselines and the model folder. Importing ``models.registry`` registers every
variant in ``MODEL_REGISTRY``; the model folder's own modules (``bundle``, ``folder_files``,
``calibration``, ``ensemble``, ``trained``) load without torch, for the slim install."""
