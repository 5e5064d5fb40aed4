/* The plugin's dependency (see dlplugin.c): loaded local to it. */
int dlpdep_value(void) { return 42; }
