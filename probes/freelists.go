package probes

import "strings"

// freeListParam names the MCA parameter that bounds the Open MPI free lists
// of an item class, e.g. "btl_vader_free_list_max" for
// "mca_btl_vader_frag_t", or "" when the class is not one mpiprobe knows.
func freeListParam(class string) string {
	for _, m := range []struct{ prefix, param string }{
		{"mca_btl_vader_", "btl_vader_free_list_max"},
		{"mca_btl_tcp_", "btl_tcp_free_list_max"},
		{"mca_btl_openib_", "btl_openib_free_list_max"},
		{"mca_btl_sm_", "btl_sm_free_list_max"},
		{"mca_pml_ob1_", "pml_ob1_free_list_max"},
		{"mca_pml_base_send_request", "pml_ob1_free_list_max"},
		{"mca_pml_base_recv_request", "pml_ob1_free_list_max"},
	} {
		if strings.HasPrefix(class, m.prefix) {
			return m.param
		}
	}
	return ""
}
