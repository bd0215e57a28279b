"""ttfg test plugin: backends and a model that ttfg finds through its entry points."""
