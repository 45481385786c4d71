"""The package's version, in a module of its own so the connection core (its
ApiVersions request names the client software) and the SASL mechanisms can
read it without importing the package, which imports them."""
__version__ = "0.1.0"
