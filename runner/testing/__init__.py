"""Test and demo tools: an in-memory ListerWatcher (``memory``), the embedded API server
(``apiserver``, also behind ``kinrun CONFIG --embedded``) and a real kube-apiserver + etcd
control plane from envtest assets (``envtest``). Nothing here is imported by the runtime
unless ``--embedded`` is used."""
