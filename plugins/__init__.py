"""Built-in kinrun plugins, registered through the `kinrun` entry-point group."""
