"""Helpers the tests share (no tests here): import them as ``from tests.support.X import ...``.

``tests`` is a package (every test folder has an ``__init__.py``), so pytest puts the repository
root on ``sys.path`` and same-named test modules in different folders do not collide.
"""
