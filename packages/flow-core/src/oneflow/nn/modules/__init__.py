"""nn modules. Each ``modules/<family>.py`` lists its classes in ``__all__``; all are exported as ``oneflow.nn.<Name>``."""
