"""The API's routes: thin handlers that parse HTTP and hand over to `tocsin.api.service`."""
