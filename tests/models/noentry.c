/* noentry.c - a shared object that is not a Kairos model (no kr_model_entry), for the test
 * that such a file is refused with a clear message. */
int not_a_model(void) { return 42; }
