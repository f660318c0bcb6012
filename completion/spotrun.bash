# bash completion for spotrun (installed as
# $(PREFIX)/share/bash-completion/completions/spotrun).
_spotrun()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    local cmds="cancel catalog ckpt cost daemon dashboard events gpus launch logs nodes plan sim status version"
    local common="--api --state-dir --json --help"

    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
        return
    fi
    case $prev in
        --gpu)
            COMPREPLY=($(compgen -W "A100 A100-80GB A10G B200 H100 H100-MEGA H200 L4 L40S V100" -- "$cur"))
            return ;;
        --cloud)
            COMPREPLY=($(compgen -W "aws gcp azure lambda coreweave" -- "$cur"))
            return ;;
        --data|--state-dir|--workdir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --focus)
            COMPREPLY=($(compgen -f -- "$cur") -)
            return ;;
    esac
    case $cmd in
        plan)
            COMPREPLY=($(compgen -W "--all --limit --work-hours --deadline-hours --data --json --help" -- "$cur"))
            [[ $cur != -* ]] && COMPREPLY+=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur")) ;;
        launch)
            COMPREPLY=($(compgen -W "-d --detach -y --yes --env --max-restarts --workdir --no-logs $common" -- "$cur"))
            [[ $cur != -* ]] && COMPREPLY+=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur")) ;;
        catalog)
            COMPREPLY=($(compgen -W "--gpu --spot --cloud --region --zone --limit --data --json --help" -- "$cur")) ;;
        gpus)
            COMPREPLY=($(compgen -W "--cloud --region --data --json --help A100 H100 H200 L4 V100" -- "$cur")) ;;
        status|logs|events|cancel)
            COMPREPLY=($(compgen -W "$common -f --follow --rank" -- "$cur")) ;;
        nodes)
            COMPREPLY=($(compgen -W "--all --job $common" -- "$cur")) ;;
        daemon)
            COMPREPLY=($(compgen -W "start stop status --listen --help" -- "$cur")) ;;
        cost)
            COMPREPLY=($(compgen -W "--by --since --until --job --focus --account --account-name --api --state-dir --json --help" -- "$cur")) ;;
        ckpt)
            COMPREPLY=($(compgen -W "ls verify inspect bench --json --help" -- "$cur")) ;;
        sim)
            COMPREPLY=($(compgen -W "--help --json --work-hours --deadline-hours --windows" -- "$cur")) ;;
        *)
            COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
    esac
}
complete -F _spotrun spotrun
