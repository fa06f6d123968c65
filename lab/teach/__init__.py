"""Teaching: the exercise workspace and the hidden-test checker."""
