/* oldabi.c - a model as it was built against kairos.h before KR_ABI_VERSION existed: it
 * exports kr_model_entry() but carries no kr_abi_version. Loading must refuse it, naming
 * the reason, instead of reading its tables with today's layout (bad_input.py). */
struct kr_model;

static const unsigned long long table[16];

const struct kr_model *kr_model_entry(void)
{
    return (const struct kr_model *)table;
}
