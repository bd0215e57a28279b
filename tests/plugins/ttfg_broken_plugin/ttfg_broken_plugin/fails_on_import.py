raise RuntimeError("this plugin module fails when imported")
